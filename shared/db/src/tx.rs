//! The transaction a read's body runs its statements in.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures_util::TryStreamExt;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use crate::DbError;

/// A boxed future borrowing a transaction.
pub type TxFuture<'t, T> = Pin<Box<dyn Future<Output = Result<T, DbError>> + Send + 't>>;

/// A statement parameter with its declared type (what `query_typed` needs).
pub type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// The open read-only transaction a read runs in.
///
/// A body whose statements do not depend on each other's rows ends with one of the
/// `…_and_commit` methods: they take the transaction by value, so nothing can be sent
/// after them, and they send `COMMIT` in the same flight as the last statements. With the
/// pipelined start of [`Db::read`](crate::Db::read), such a read is one round trip to the
/// proxy (in AWS, Lambda to RDS Proxy and on to the database, each a network hop). A body
/// that ends otherwise is committed by `Db::read`, one round trip later.
pub struct Tx<'a> {
    pub(crate) client: &'a Client,
    /// Set once the transaction's `COMMIT` (the body's own, or the read's) was answered:
    /// the transaction is over, whatever the statements before it did (a `COMMIT` after a
    /// failed statement rolls back).
    pub(crate) ended: &'a AtomicBool,
    /// Rows the body's statements returned (for the read's trace span).
    pub(crate) rows: &'a AtomicU64,
}

impl Tx<'_> {
    /// Runs one statement and returns its rows.
    ///
    /// # Errors
    ///
    /// [`DbError::Timeout`] when the transaction's statement timeout fired,
    /// [`DbError::ConnectionLost`] when the connection died, [`DbError::Query`] otherwise.
    pub async fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, DbError> {
        let rows = self
            .client
            .query_typed(sql, params)
            .await
            .map_err(DbError::from_query)?;
        self.count(rows.len());
        Ok(rows)
    }

    fn count(&self, rows: usize) {
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// Runs the transaction's last statement and commits, in one flight: returns its rows.
    ///
    /// # Errors
    ///
    /// As [`Tx::query`]; the statement's error comes first.
    pub async fn query_and_commit(
        self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, DbError> {
        let [rows] = self.queries_and_commit([(sql, params)]).await?;
        Ok(rows)
    }

    /// Runs the transaction's last statements, which must not depend on each other's rows,
    /// and commits, all in one flight: returns each statement's rows, in order.
    ///
    /// # Errors
    ///
    /// As [`Tx::query`]; the first statement's error comes first.
    pub async fn queries_and_commit<const N: usize>(
        self,
        statements: [(&str, &[Param<'_>]); N],
    ) -> Result<[Vec<Row>; N], DbError> {
        let client = self.client;
        // join_all polls its futures in order, and the driver sends each request when its
        // future is first polled: the statements leave in order, COMMIT after them.
        let sent = futures_util::future::join_all(
            statements
                .into_iter()
                .map(|(sql, params)| client.query_typed(sql, params)),
        );
        let (results, committed) = tokio::join!(sent, self.commit());
        let mut rows: [Vec<Row>; N] = std::array::from_fn(|_| Vec::new());
        for (slot, result) in rows.iter_mut().zip(results) {
            *slot = result.map_err(DbError::from_query)?;
            self.count(slot.len());
        }
        committed?;
        Ok(rows)
    }

    /// Runs the transaction's last statement, handing its rows to `each` as
    /// [`Tx::for_each_row`] does, and commits in the same flight. Rows `each` did not want
    /// are discarded by the driver before `COMMIT`'s answer, which arrives after them.
    ///
    /// # Errors
    ///
    /// As [`Tx::query`]; the statement's error comes first.
    pub async fn for_each_row_and_commit<F>(
        self,
        sql: &str,
        params: &[Param<'_>],
        each: F,
    ) -> Result<u64, DbError>
    where
        F: FnMut(Row) -> ControlFlow<()>,
    {
        let (seen, committed) = tokio::join!(self.for_each_row(sql, params, each), self.commit());
        let seen = seen?;
        committed?;
        Ok(seen)
    }

    /// `COMMIT`, sent when first polled (after whatever was polled before it).
    pub(crate) async fn commit(&self) -> Result<(), DbError> {
        self.client
            .query_typed("COMMIT", &[])
            .await
            .map_err(DbError::from_query)?;
        self.ended.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Runs one statement and hands its rows to `each` as they arrive, until `each` says
    /// [`ControlFlow::Break`]: rows after that are never decoded or kept (the driver
    /// discards what the server still sends), so a caller with a byte budget stops reading
    /// as soon as the budget is spent. Returns how many rows `each` saw.
    ///
    /// # Errors
    ///
    /// As [`Tx::query`].
    pub async fn for_each_row<F>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut each: F,
    ) -> Result<u64, DbError>
    where
        F: FnMut(Row) -> ControlFlow<()>,
    {
        let stream = self
            .client
            .query_typed_raw(sql, params.iter().map(|(value, ty)| (*value, ty.clone())))
            .await
            .map_err(DbError::from_query)?;
        let mut stream = std::pin::pin!(stream);
        let mut seen = 0;
        while let Some(row) = stream.try_next().await.map_err(DbError::from_query)? {
            seen += 1;
            if each(row).is_break() {
                break;
            }
        }
        self.count(seen as usize);
        Ok(seen)
    }
}
