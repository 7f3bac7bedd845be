//! JSON (schemas in docs/json.md): run documents, exports, comparisons, bisects. Written
//! whole, to a file or stdout; nothing else may go to stdout when it does.

use super::render::Renderer;
use analyse::stats::compare::Comparison;
use model::results::{EXPORT_SCHEMA, Export, RunDocument, SCHEMA_VERSION};
use serde::Serialize;

pub struct Json;

fn pretty<T: Serialize>(v: &T) -> String {
    measure::outputs::json_text(v).unwrap_or_default()
}

impl Renderer for Json {
    /// `sigbench.comparison` version 1.
    fn comparison(&self, c: &Comparison, _all: bool) -> Option<String> {
        let mut v = serde_json::to_value(c).unwrap_or_default();
        v["schema"] = "sigbench.comparison".into();
        v["version"] = 1.into();
        Some(pretty(&v))
    }

    /// An export (`sigbench.export`), which `import` reads.
    fn runs(&self, runs: &[RunDocument]) -> Option<String> {
        Some(pretty(&Export {
            schema: EXPORT_SCHEMA.into(),
            version: SCHEMA_VERSION,
            runs: runs.to_vec(),
        }))
    }
}
