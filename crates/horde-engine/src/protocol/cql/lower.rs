//! Lowering CQL's steps and the plan's cluster: each statement gets an id, its slot in every
//! worker's prepared statements.

use super::ycsb::{InsertSequence, KeyChooser, Operation, YcsbProgram, YcsbStatements};
use super::{CqlBatchProgram, CqlProgram, CqlStatementProgram, CqlStepProgram, Prepared};
use crate::lower::{LoweringContext, StepAt};
use horde_plan::{CqlStep, Plan, YcsbDistribution, YcsbPhase, YcsbStep};
use std::sync::Arc;
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
                statement: Prepared { page_size: step.page_size, ..self.prepared(cx, &step.cql, &step.params) },
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
            CqlStep::CqlYcsb(step) => CqlStepProgram::Ycsb(Box::new(self.ycsb(cx, &at, step))),
        }
    }

    /// A YCSB step: a row per operation of its mix, its statements, its key chooser.
    fn ycsb(&mut self, cx: &mut LoweringContext, at: &StepAt, step: &YcsbStep) -> YcsbProgram {
        let mix = match step.phase {
            YcsbPhase::Load => vec![(1.0, Operation::Insert, cx.row(at.row_name("INSERT")))],
            YcsbPhase::Run => {
                let named = step.mix().named();
                let total: f64 = named.iter().map(|(_, share)| share).sum();
                let mut upto = 0.0;
                named
                    .into_iter()
                    .zip(Operation::ALL)
                    .filter(|((_, share), _)| *share > 0.0)
                    .map(|((name, share), operation)| {
                        upto += share / total;
                        (upto, operation, cx.row(at.row_name(name)))
                    })
                    .collect()
            }
        };
        let fields = step.field_count as usize;
        let mut prepare = |cql: String| self.prepared(cx, &cql, &[]);
        let statements =
            YcsbStatements::new(&step.table, fields, step.read_all_fields, step.write_all_fields, &mut prepare);
        let loaded_up_to = step.insert_start.saturating_add(step.record_count);
        let expected_inserts = step.operation_count.map_or(0, |operations| {
            let mix = step.mix();
            let total: f64 = mix.named().iter().map(|(_, share)| share).sum();
            (operations as f64 * mix.insert / total.max(f64::MIN_POSITIVE)).ceil() as u64
        });
        YcsbProgram {
            phase: step.phase,
            mix,
            statements,
            keys: match step.phase {
                // The load phase only inserts: no chooser to build (a zipfian's sum is O(n)).
                YcsbPhase::Load => KeyChooser::new(YcsbDistribution::Uniform, step.insert_start, step.record_count, 0),
                YcsbPhase::Run => {
                    KeyChooser::new(step.key_distribution(), step.insert_start, step.record_count, expected_inserts)
                }
            },
            field_count: fields,
            field_length: step.field_length as usize,
            write_all_fields: step.write_all_fields,
            max_scan_length: step.max_scan_length,
            consistency: step.consistency,
            shared: Arc::new(InsertSequence::starting_at(match step.phase {
                YcsbPhase::Load => step.insert_start,
                YcsbPhase::Run => loaded_up_to,
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
            page_size: None,
        }
    }

    /// The run's cluster settings, a CA file resolved against the plan's directory and read
    /// once here, so that a missing or unusable one is named before anything runs.
    pub(crate) fn finish(self, plan: &Plan, cx: &mut LoweringContext) -> CqlProgram {
        let mut cluster = plan.cql.clone();
        if let Some(tls) = cluster.as_mut().and_then(|c| c.tls.as_mut()) {
            if let Some(file) = &tls.ca_file {
                tls.ca_file = Some(cx.resolve_file(file).display().to_string());
            }
            if let Err(why) = super::tls::client_config(tls) {
                cx.errors.push(horde_plan::PlanError::new("cql.tls.ca_file", why));
            }
        }
        CqlProgram {
            cluster,
            statements: self.statements,
            request_timeout: Duration::from_millis(plan.cql.as_ref().map_or(10_000, |c| c.request_timeout_ms)),
        }
    }
}
