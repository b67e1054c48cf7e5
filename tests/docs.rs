//! The documentation as a reader meets it: every relative link in `README.md`,
//! `CHANGELOG.md`, `docs/` and `bench/results/` leads to a file, every anchor to a heading,
//! the README stays a front page, and the README and the guides describe the product as it
//! is, with no development history (that belongs in `CHANGELOG.md` and `bench/results/`).
//!
//! Markdown is scanned by hand, just enough for these checks: fenced blocks and inline code
//! spans are set aside first, so a link or a word quoted as code is never taken for prose.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The README's ceiling: past it, the front page has become a manual again.
const README_MAX_LINES: usize = 300;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `.md` files directly in `dir`, relative to the workspace root, sorted.
fn markdown_in(dir: &str) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(root().join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("{dir}: {e}")).path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| Path::new(dir).join(path.file_name().expect("a directory entry has a name")))
        .collect();
    files.sort();
    files
}

/// Every page whose links are checked.
fn linked_pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md"), PathBuf::from("CHANGELOG.md")];
    pages.extend(markdown_in("docs"));
    pages.extend(markdown_in("bench/results"));
    pages
}

/// The pages that describe the product as it is, and so must carry no history.
fn guide_pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(markdown_in("docs"));
    pages
}

/// A page split into what a reader sees as prose and what is quoted as code.
struct Page {
    /// Lines outside fenced blocks, as written (headings are read from these).
    unfenced: Vec<String>,
    /// The same lines with every inline code span blanked, line for line.
    prose: Vec<String>,
    /// Each inline code span: the line it starts on (1-based) and its content.
    code: Vec<(usize, String)>,
}

/// A fence opens with three or more backticks or tildes; its content is code, whatever it
/// looks like. Returns the fence character and the length of its run.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start();
    let first = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|c| *c == first).count();
    (run >= 3).then_some((first, run))
}

fn parse(text: &str) -> Page {
    let mut unfenced = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for line in text.lines() {
        let marker = fence_marker(line);
        match (open, marker) {
            (None, Some(m)) => {
                open = Some(m);
                unfenced.push(String::new());
            }
            // A fence closes with a run of the same character at least as long, and nothing
            // after it (the character is ASCII, so the run's length is its byte length).
            (Some((c, n)), Some((m, run))) if m == c && run >= n => {
                let rest = &line.trim_start()[run..];
                if rest.trim().is_empty() {
                    open = None;
                }
                unfenced.push(String::new());
            }
            (Some(_), _) => unfenced.push(String::new()),
            (None, None) => unfenced.push(line.to_owned()),
        }
    }
    let (prose, code) = blank_code_spans(&unfenced);
    Page {
        unfenced,
        prose,
        code,
    }
}

/// The length of the run of backticks starting at `i`.
fn backtick_run(chars: &[char], i: usize) -> usize {
    chars[i..].iter().take_while(|c| **c == '`').count()
}

/// Where the code span opened by a run of `n` backticks ends: the start of the next run of
/// exactly `n`. A span never crosses a blank line (the paragraph ends there), and without a
/// closing run the backticks are literal.
fn closing_run(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '`' => {
                let run = backtick_run(chars, j);
                if run == n {
                    return Some(j);
                }
                j += run;
            }
            '\n' => {
                let next_line = chars[j + 1..].iter().take_while(|c| **c != '\n');
                if next_line.clone().all(|c| c.is_whitespace()) {
                    return None;
                }
                j += 1;
            }
            _ => j += 1,
        }
    }
    None
}

/// Inline code spans may run over several lines of a paragraph, so they are found in the
/// page as a whole; their content is replaced by spaces (newlines kept, so line numbers
/// stay true) and returned on its own.
fn blank_code_spans(lines: &[String]) -> (Vec<String>, Vec<(usize, String)>) {
    let chars: Vec<char> = lines.join("\n").chars().collect();
    let mut out = String::with_capacity(chars.len());
    let mut code = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            if chars[i] == '\n' {
                line += 1;
            }
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = backtick_run(&chars, i);
        let Some(end) = closing_run(&chars, i + n, n) else {
            out.extend(std::iter::repeat_n('`', n));
            i += n;
            continue;
        };
        // CommonMark turns the line endings inside a span into spaces.
        let content: String = chars[i + n..end]
            .iter()
            .map(|c| if *c == '\n' { ' ' } else { *c })
            .collect();
        code.push((line, content.trim().to_owned()));
        out.extend(std::iter::repeat_n(' ', n));
        for c in &chars[i + n..end] {
            if *c == '\n' {
                line += 1;
                out.push('\n');
            } else {
                out.push(' ');
            }
        }
        out.extend(std::iter::repeat_n(' ', n));
        i = end + n;
    }
    (out.split('\n').map(str::to_owned).collect(), code)
}

/// The targets of the inline links `[text](target)` in prose, with their line numbers.
fn links(page: &Page) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in page.prose.iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            // The target ends at the parenthesis that closes the link; a title follows a space.
            let mut depth = 0usize;
            let end = after
                .char_indices()
                .find(|(_, c)| match *c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth == 0 => true,
                    ')' => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                })
                .map_or(after.len(), |(i, _)| i);
            let target = after[..end].trim();
            let target = target.split_whitespace().next().unwrap_or_default();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            found.push((index + 1, target.to_owned()));
            rest = &after[end..];
        }
    }
    found
}

/// GitHub's anchor for a heading: lower case; letters, digits, spaces, hyphens and
/// underscores kept and everything else dropped; spaces become hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every ATX heading of a page, outside fenced blocks, in order. A slug
/// already taken gets `-1`, `-2`, ... as on GitHub.
fn anchors(page: &Page) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = Vec::new();
    for line in &page.unfenced {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim_start_matches(' ');
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        let after = &trimmed[level..];
        let is_heading = indent <= 3
            && (1..=6).contains(&level)
            && (after.is_empty() || after.starts_with([' ', '\t']));
        if !is_heading {
            continue;
        }
        // A closing run of `#` (after a space) is not part of the heading's text.
        let mut text = after.trim();
        let stripped = text.trim_end_matches('#');
        if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
            text = stripped.trim_end();
        }
        let base = slug(text);
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.push(if *count == 0 {
            base
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// What is wrong with the relative links of `file` (relative to the workspace root), whose
/// text is `text`: each problem names the file, the line and the target.
fn link_problems(file: &Path, text: &str) -> Vec<String> {
    let page = parse(text);
    let dir = file.parent().unwrap_or_else(|| Path::new(""));
    let mut problems = Vec::new();
    for (line, target) in links(&page) {
        if ["http://", "https://", "mailto:"]
            .iter()
            .any(|scheme| target.starts_with(scheme))
        {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
        let at = format!("{}:{line}: ({target})", file.display());
        let linked = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !path.is_empty() && !root().join(&linked).exists() {
            problems.push(format!("{at}: no file or directory {}", linked.display()));
            continue;
        }
        if anchor.is_empty() {
            continue;
        }
        if linked.extension().is_none_or(|e| e != "md") {
            problems.push(format!(
                "{at}: an anchor into {}, which is not a Markdown page",
                linked.display()
            ));
            continue;
        }
        let target_page = if path.is_empty() {
            parse(text)
        } else {
            parse(&read(&linked))
        };
        if !anchors(&target_page).iter().any(|a| a == anchor) {
            problems.push(format!(
                "{at}: no heading of {} has the anchor #{anchor}",
                linked.display()
            ));
        }
    }
    problems
}

/// Whether `word` occurs in `line` (lower case) at a word boundary, followed by what
/// `then` accepts (a regex's `\bword` plus the rest of the pattern).
fn occurs(line: &str, word: &str, then: impl Fn(&str) -> bool) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        !before.is_some_and(is_word) && then(&line[at + word.len()..])
    })
}

/// A commit hash as git abbreviates it: 7 to 40 lower-case hex digits. Requiring a digit
/// and a letter keeps plain numbers such as `1048576` and words such as `defaced` out.
fn is_commit_hash(code: &str) -> bool {
    (7..=40).contains(&code.len())
        && code.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        && code.chars().any(|c| c.is_ascii_digit())
        && code.chars().any(|c| c.is_ascii_alphabetic())
}

/// The marks of a development journal in a page: `issue N`, `stop N`, `this session` in prose
/// (any case: "Issue 18" starts a sentence), and commit hashes quoted as code. Code spans
/// are not prose: a header such as `Mcp-Session-Id` is the product's, not its history's.
fn history_markers(text: &str) -> Vec<(usize, String)> {
    let page = parse(text);
    let followed_by_number = |rest: &str| {
        rest.strip_prefix(' ')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    };
    let whole_word = |rest: &str| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    let mut found = Vec::new();
    for (index, line) in page.prose.iter().enumerate() {
        let lower = line.to_lowercase();
        if occurs(&lower, "issue", followed_by_number) {
            found.push((index + 1, "an issue number".to_owned()));
        }
        if occurs(&lower, "stop", followed_by_number) {
            found.push((index + 1, "a stop number".to_owned()));
        }
        // "session" alone is a product word (a sign-in session at the issuer); a working
        // session of the project's history is "this session", "session 3" and the like.
        let journal_session = ["this", "last", "previous", "earlier", "next", "later"]
            .iter()
            .any(|before| occurs(&lower, &format!("{before} session"), whole_word))
            || occurs(&lower, "session", followed_by_number);
        if journal_session {
            found.push((index + 1, "a working session".to_owned()));
        }
    }
    for (line, code) in &page.code {
        if is_commit_hash(code) {
            found.push((*line, format!("the commit hash `{code}`")));
        }
    }
    found.sort();
    found
}

#[test]
fn every_relative_link_leads_to_a_file_and_every_anchor_to_a_heading() {
    let problems: Vec<String> = linked_pages()
        .iter()
        .flat_map(|page| link_problems(page, &read(page)))
        .collect();
    assert!(
        problems.is_empty(),
        "broken links in the documentation:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_and_the_guides_carry_no_history() {
    let mut problems = Vec::new();
    for page in guide_pages() {
        for (line, what) in history_markers(&read(&page)) {
            problems.push(format!("{}:{line}: {what}", page.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "history in the README or docs/ (it belongs in CHANGELOG.md or bench/results/):\n{}",
        problems.join("\n")
    );
}

/// Why a README of this text is no longer a front page, if it is not.
fn front_page_problem(text: &str) -> Option<String> {
    let lines = text.lines().count();
    (lines > README_MAX_LINES).then(|| {
        format!(
            "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail into docs/"
        )
    })
}

#[test]
fn the_readme_is_a_front_page() {
    if let Some(problem) = front_page_problem(&read(Path::new("README.md"))) {
        panic!("{problem}");
    }
}

/// Each check above must be able to fail: here each meets what it exists to catch.
#[test]
fn the_checks_catch_what_they_are_for() {
    let page = "# Title\n\n## Same\n\n## Same\n\n\
        [fine](#same-1) [web](https://example.com) `[quoted](missing.md)`\n\
        [gone](missing.md) [no heading](#nope)\n\
        [into a page](configuration.md#no-such-heading) [a directory](../bench/)\n\
        ```\n[fenced](missing.md)\n```\n";
    let problems = link_problems(Path::new("docs/synthetic.md"), page);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with("docs/synthetic.md:8: (missing.md)"));
    assert!(problems[1].contains("#nope"));
    assert!(problems[2].contains("#no-such-heading"));

    assert_eq!(
        anchors(&parse(
            "# The OAuth bridge (`oauth`) #\n## Rotating the bridge's key\n## A\n## A\n"
        )),
        [
            "the-oauth-bridge-oauth",
            "rotating-the-bridges-key",
            "a",
            "a-1"
        ]
    );

    let journal = "Fixed in issue 14.\nIssue 18 is open.\nMeasured at stop 27.\n\
        This Session ran.\nNo sessions, no `Mcp-Session-Id`, no `session 3`, no tissue 4, \
        an upstream session.\n\
        The commit `a4142fc`.\nThe default `1048576`, the word `defaced`.\n";
    let lines: Vec<usize> = history_markers(journal).iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 2, 3, 4, 6]);

    assert!(front_page_problem(&"line\n".repeat(README_MAX_LINES)).is_none());
    assert!(front_page_problem(&"line\n".repeat(README_MAX_LINES + 1)).is_some());
}
