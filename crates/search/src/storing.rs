//! Storing a run while it runs: an [`Observer`] of the plan driver that records the run
//! when it really starts and each finished case in a transaction of its own, so a killed
//! run leaves whole cases behind. It composes with the binary's console observer.

use analyse::store::Store;
use anyhow::Result;
use measure::plan::{Case, Observer, Plan};
use model::results::{CaseResult, RunDocument};

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
        model::diag::warn(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use measure::plan::fixtures::{plan, run_in, temp};

    /// An observer beside the store, as the console is: counts the cases it hears.
    #[derive(Default)]
    struct Seen(usize);

    impl Observer for Seen {
        fn case_started(&mut self, _: &Case, _: &Plan, _: u64) {}
        fn tick(&mut self, _: u64) {}
        fn case_done(&mut self, _: &CaseResult, _: &Plan) -> Result<()> {
            self.0 += 1;
            Ok(())
        }
        fn warning(&mut self, _: &str) {}
    }

    #[test]
    fn a_stored_run_is_whole_case_by_case_and_compares_with_itself() {
        use analyse::stats::compare::{Samples, compare, verdict};
        use analyse::store::{Location, Selector, Store};
        let dir = temp("stored");
        std::fs::create_dir_all(&dir).unwrap();
        let db = Location::Sqlite(dir.join("s.db"));
        let p = plan(3, 0, false);
        for label in ["x", "y"] {
            let mut storing = Some(Storing::new(Store::open(&db).unwrap()));
            let mut seen = Seen::default();
            let mut doc = run_in(&p, &dir.join(label), label, &mut (&mut seen, &mut storing));
            doc.status = "complete".into();
            let s = storing.as_mut().unwrap();
            assert_eq!(s.error, None);
            assert!(s.finish(&doc).is_some());
            assert_eq!(seen.0, 12, "the console heard every case too");
        }
        let store = Store::open_read(&db).unwrap();
        let x = store.load(&Selector::Label("x".into())).unwrap();
        let y = store.load(&Selector::Label("y".into())).unwrap();
        assert_eq!(
            (x.len(), x[0].cases.len(), x[0].status.as_str()),
            (1, 12, "complete")
        );
        let cmp = compare(
            &[Samples::from_runs("x", &x), Samples::from_runs("y", &y)],
            analyse::stats::Test::MannWhitney,
            0.05,
        );
        // The same plan twice: the counts are exactly equal, so no verdict of a change.
        let calls: Vec<_> = cmp.pairs[0]
            .rows
            .iter()
            .filter(|r| r.metric == "calls")
            .collect();
        assert_eq!(calls.len(), 4);
        assert!(calls.iter().all(|r| r.exact && !r.significant));
        assert_ne!(
            verdict(&cmp, &["calls".into()], 2.0),
            analyse::stats::compare::Verdict::Regression
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
