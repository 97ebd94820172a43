//! How a [`TpchScanExec`] travels inside a distributed plan fragment: its table, scale factor,
//! parts and projection (the rows are generated where the fragment runs).
//!
//! Registered after `SqeCodec` on the coordinator and on every worker, in the same order:
//! the composed codec names a node's codec by its position.

use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, exec_err};
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use serde::{Deserialize, Serialize};

use crate::catalog::valid_scale_factor;
use crate::exec::TpchScanExec;
use crate::tables::TableShape;

const TPCH_SCAN: &str = "sqe.tpch_scan.v1";

#[derive(Debug, Default, Clone, Copy)]
pub struct TpchCodec;

#[derive(Serialize, Deserialize)]
struct ScanWire {
    kind: String,
    shape: TableShape,
    scale_factor: f64,
    part_count: i32,
    partitions: Vec<(i32, i32)>,
    projection: Vec<usize>,
}

impl PhysicalExtensionCodec for TpchCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let wire: ScanWire = serde_json::from_slice(buf)
            .map_err(|e| exec_datafusion_err!("bad TPC-H scan in a plan: {e}"))?;
        if wire.kind != TPCH_SCAN {
            return exec_err!(
                "unknown TPC-H plan node '{}': coordinator and worker versions differ?",
                wire.kind
            );
        }
        if !inputs.is_empty() {
            return exec_err!("TpchScanExec takes no inputs");
        }
        if !valid_scale_factor(wire.scale_factor) {
            return exec_err!("TPC-H scan with scale factor {}", wire.scale_factor);
        }
        let scan = TpchScanExec::with_partitions(
            wire.shape,
            wire.scale_factor,
            wire.part_count,
            wire.partitions.into_iter().map(|(s, e)| s..e).collect(),
            wire.projection,
        )?;
        Ok(Arc::new(scan))
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>) -> Result<()> {
        let Some(scan) = node.downcast_ref::<TpchScanExec>() else {
            return exec_err!("{} is not a TPC-H scan", node.name());
        };
        let wire = ScanWire {
            kind: TPCH_SCAN.to_string(),
            shape: scan.shape(),
            scale_factor: scan.scale_factor(),
            part_count: scan.part_count(),
            partitions: scan.partitions().iter().map(|r| (r.start, r.end)).collect(),
            projection: scan.projection().to_vec(),
        };
        serde_json::to_writer(buf, &wire)
            .map_err(|e| exec_datafusion_err!("cannot encode a TPC-H scan: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;
    use crate::tables::{Money, Naming, Table};

    fn scan() -> TpchScanExec {
        let shape = TableShape {
            table: Table::LineItem,
            naming: Naming::Simplified,
            money: Money::Double,
        };
        TpchScanExec::new(shape, 1.0, Some(&[0, 4]), 3).expect("a scan")
    }

    #[test]
    fn a_scan_survives_the_trip() -> Result<()> {
        let original = scan();
        let mut buf = Vec::new();
        TpchCodec.try_encode(Arc::new(original.clone()), &mut buf)?;
        let ctx = SessionContext::new().task_ctx();
        let decoded = TpchCodec.try_decode(&buf, &[], &ctx)?;
        let decoded = decoded
            .downcast_ref::<TpchScanExec>()
            .expect("a TPC-H scan");
        assert_eq!(decoded.partitions(), original.partitions());
        assert_eq!(decoded.projection(), [0, 4]);
        assert_eq!(decoded.schema(), original.schema());
        Ok(())
    }

    #[test]
    fn a_tampered_scan_is_refused() -> Result<()> {
        let mut buf = Vec::new();
        TpchCodec.try_encode(Arc::new(scan()), &mut buf)?;
        let ctx = SessionContext::new().task_ctx();
        let text = String::from_utf8(buf).expect("JSON");
        for tampered in [
            text.replace("\"scale_factor\":1.0", "\"scale_factor\":-1.0"),
            text.replace("[0,4]", "[0,99]"),
            text.replace("\"part_count\":", "\"part_count\":-"),
        ] {
            assert_ne!(tampered, text);
            assert!(
                TpchCodec
                    .try_decode(tampered.as_bytes(), &[], &ctx)
                    .is_err(),
                "{tampered}"
            );
        }
        Ok(())
    }
}
