//! Lowering CQL's steps and the plan's cluster: each statement gets an id, its slot in every
//! worker's prepared statements.

use super::{CqlBatchProgram, CqlExtractor, CqlProgram, CqlStatementProgram, CqlStepProgram, Prepared};
use crate::checks::OwnSource;
use crate::lower::{LoweringContext, StepAt};
use horde_plan::{CheckSource, CqlStep, Plan, RowsSource};
use std::time::Duration;

#[derive(Default)]
pub(crate) struct CqlLowering {
    statements: usize,
}

impl CqlLowering {
    pub(crate) fn lower_step(&mut self, cx: &mut LoweringContext, at: StepAt, step: &CqlStep) -> CqlStepProgram {
        let path = at.path;
        let checks = |cx: &mut LoweringContext, checks: &[horde_plan::Check]| {
            checks.iter().enumerate().filter_map(|(i, check)| cx.check(&format!("{path}.checks[{i}]"), check)).collect()
        };
        match step {
            CqlStep::Cql(step) => CqlStepProgram::Statement(Box::new(CqlStatementProgram {
                row_id: cx.row(at.row_name(&step.name)),
                statement: self.prepared(cx, &step.cql, &step.params),
                consistency: step.consistency,
                serial_consistency: step.serial_consistency,
                asynchronous: step.asynchronous,
                checks: checks(cx, &step.checks),
            })),
            CqlStep::CqlBatch(batch) => CqlStepProgram::Batch(Box::new(CqlBatchProgram {
                row_id: cx.row(at.row_name(&batch.name)),
                kind: batch.kind,
                statements: batch.statements.iter().map(|s| self.prepared(cx, &s.cql, &s.params)).collect(),
                consistency: batch.consistency,
                serial_consistency: batch.serial_consistency,
                checks: checks(cx, &batch.checks),
            })),
        }
    }

    /// A statement with the next slot among the ones each worker prepares.
    fn prepared(&mut self, cx: &mut LoweringContext, cql: &str, params: &[String]) -> Prepared {
        self.statements += 1;
        Prepared {
            id: self.statements - 1,
            cql: cql.to_string(),
            params: params.iter().map(|p| cx.template(p)).collect(),
        }
    }

    pub(crate) fn finish(self, plan: &Plan) -> CqlProgram {
        CqlProgram {
            cluster: plan.cql.clone(),
            statements: self.statements,
            request_timeout: Duration::from_millis(plan.cql.as_ref().map_or(10_000, |c| c.request_timeout_ms)),
        }
    }
}

impl OwnSource for CqlExtractor {
    fn lower(source: &CheckSource, _path: &str, _cx: &mut LoweringContext) -> Option<(Self, String)> {
        match source {
            CheckSource::Rows(RowsSource::RowCount) => Some((CqlExtractor::RowCount, "row_count".to_string())),
            CheckSource::Rows(RowsSource::Column { name }) => {
                Some((CqlExtractor::Column(name.clone()), format!("column({name:?})")))
            }
            _ => None,
        }
    }
}
