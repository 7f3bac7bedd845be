//! Storing a run while it runs: an [`Observer`] of the plan driver that records the run
//! when it really starts and each finished case in a transaction of its own, so a killed
//! run leaves whole cases behind. It composes with the binary's console observer.

use super::Store;
use crate::plan::{Case, Observer, Plan};
use crate::results::{CaseResult, RunDocument};
use anyhow::Result;

pub struct Storing {
    pub store: Store,
    /// The run's row, once recorded.
    run: Option<i64>,
    stored: usize,
    /// The first thing the store refused. Nothing more is written after it; the run
    /// measures on (its document keeps every case) and the caller makes it an error.
    pub error: Option<String>,
}

impl Storing {
    pub fn new(store: Store) -> Storing {
        Storing {
            store,
            run: None,
            stored: 0,
            error: None,
        }
    }

    /// The run's row id, once recorded.
    pub fn run_id(&self) -> Option<i64> {
        self.run
    }

    /// Record how the run ended (its status and metadata). Returns the row id, or None
    /// when the store failed (then `error` says why).
    pub fn finish(&mut self, doc: &RunDocument) -> Option<i64> {
        let id = self.run.filter(|_| self.error.is_none())?;
        match self.store.finish_run(id, doc) {
            Ok(()) => Some(id),
            Err(e) => {
                self.error = Some(format!("{e:#}"));
                None
            }
        }
    }

    fn failed(&mut self, what: &str, e: anyhow::Error) {
        crate::diag::warn(format!(
            "{what}: the results store failed ({e:#}); measuring on, the results will be in the run's JSON document"
        ));
        self.error = Some(format!("{e:#}"));
    }
}

impl Observer for Storing {
    fn run_started(&mut self, doc: &RunDocument) {
        match self.store.begin_run(doc) {
            Ok(id) => self.run = Some(id),
            Err(e) => self.failed("recording the run", e),
        }
    }

    fn case_started(&mut self, _: &Case, _: &Plan, _: u64) {}

    fn tick(&mut self, _: u64) {}

    fn case_done(&mut self, result: &CaseResult, _: &Plan) -> Result<()> {
        if let (None, Some(id)) = (&self.error, self.run) {
            match self.store.add_case(id, self.stored, result) {
                Ok(()) => self.stored += 1,
                Err(e) => self.failed("storing a case", e),
            }
        }
        Ok(())
    }

    fn warning(&mut self, _: &str) {}
}
