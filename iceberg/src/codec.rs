//! The physical codec SQE registers on the coordinator and on every worker, so its plan nodes
//! survive the trip inside a distributed plan fragment.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema as ArrowSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use datafusion_proto::protobuf;
use iceberg::TableIdent;
use iceberg::expr::BoundPredicate;
use iceberg::scan::{FileScanTask, FileScanTaskDeleteFile};
use iceberg::spec::{
    DataFileFormat, Literal, NameMapping, PartitionSpec, Schema, Struct, TableMetadata, Type,
};
use iceberg::table::Table;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::delete::{RowChangeWriteExec, RowPositionsExec};
use crate::error::TableError;
use crate::scan::{IcebergScanExec, ScanIo};
use crate::storage::{file_io_with_props, overlay_table_props};
use crate::write::DataFileWriteExec;

const ICEBERG_SCAN: &str = "sqe.iceberg_scan.v1";
const DATA_FILE_WRITE: &str = "sqe.data_file_write.v1";
const ROW_POSITIONS: &str = "sqe.row_positions.v1";
const ROW_CHANGE_WRITE: &str = "sqe.row_change_write.v1";

/// Encodes and decodes SQE's own execution plan nodes.
///
/// Holds the process's own storage properties (its `[storage]` section): a decoded scan reads
/// with those plus whatever per-table properties the plan carries, so long-lived keys stay in
/// each process's configuration instead of travelling inside plans.
#[derive(Debug, Clone, Default)]
pub struct SqeCodec {
    storage_props: HashMap<String, String>,
}

impl SqeCodec {
    pub fn new(storage_props: HashMap<String, String>) -> Self {
        Self { storage_props }
    }
}

#[derive(Clone, PartialEq, prost::Message)]
struct SqeNodeProto {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(message, optional, tag = "2")]
    schema: Option<protobuf::Schema>,
    /// JSON: Iceberg's own types (predicates, specs, schemas) already have a serde form.
    #[prost(bytes = "vec", tag = "3")]
    payload: Vec<u8>,
    /// The columns a row-position read reads from its files.
    #[prost(message, optional, tag = "4")]
    read_schema: Option<protobuf::Schema>,
}

#[derive(Serialize, Deserialize)]
struct ScanPayload {
    table: String,
    limit: Option<usize>,
    #[serde(flatten)]
    files: FilesWire,
}

/// Files to read, by partition, and how to reach them.
#[derive(Serialize, Deserialize)]
struct FilesWire {
    plan_props: HashMap<String, String>,
    schemas: Vec<Schema>,
    specs: BTreeMap<i32, PartitionSpec>,
    name_mapping: Option<NameMapping>,
    partitions: Vec<Vec<TaskWire>>,
}

/// The table a [`DataFileWriteExec`] writes to: all a writer reads of it is its metadata
/// (location, schema, partition spec, write properties).
#[derive(Serialize, Deserialize)]
struct WritePayload {
    table: TableIdent,
    metadata: TableMetadata,
    metadata_location: Option<String>,
    plan_props: HashMap<String, String>,
}

#[derive(Serialize, Deserialize)]
struct TaskWire {
    path: String,
    format: DataFileFormat,
    file_size: u64,
    start: u64,
    length: u64,
    record_count: Option<u64>,
    schema: usize,
    project_field_ids: Vec<i32>,
    predicate: Option<BoundPredicate>,
    deletes: Vec<FileScanTaskDeleteFile>,
    spec_id: Option<i32>,
    partition: Option<serde_json::Value>,
    case_sensitive: bool,
}

fn codec_err(msg: impl Into<String>) -> DataFusionError {
    DataFusionError::from(TableError::Codec(msg.into()))
}

impl PhysicalExtensionCodec for SqeCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node =
            SqeNodeProto::decode(buf).map_err(|e| codec_err(format!("bad SQE node: {e}")))?;
        match node.kind.as_str() {
            ICEBERG_SCAN => {
                if !inputs.is_empty() {
                    return Err(codec_err("IcebergScanExec takes no inputs"));
                }
                let schema = decoded_schema(node.schema.as_ref(), "IcebergScanExec")?;
                let payload: ScanPayload = serde_json::from_slice(&node.payload)
                    .map_err(|e| codec_err(format!("bad IcebergScanExec payload: {e}")))?;
                let (partitions, io) = self.decode_files(payload.files)?;
                Ok(Arc::new(IcebergScanExec::with_partitions(
                    payload.table,
                    schema,
                    partitions,
                    io,
                    payload.limit,
                )))
            }
            ROW_POSITIONS => {
                if !inputs.is_empty() {
                    return Err(codec_err("RowPositionsExec takes no inputs"));
                }
                let schema = decoded_schema(node.schema.as_ref(), "RowPositionsExec")?;
                let read_schema = decoded_schema(node.read_schema.as_ref(), "RowPositionsExec")?;
                let files: FilesWire = serde_json::from_slice(&node.payload)
                    .map_err(|e| codec_err(format!("bad RowPositionsExec payload: {e}")))?;
                let (partitions, io) = self.decode_files(files)?;
                Ok(Arc::new(RowPositionsExec::with_partitions(
                    schema,
                    read_schema,
                    partitions,
                    io,
                )))
            }
            DATA_FILE_WRITE | ROW_CHANGE_WRITE => {
                let [input] = inputs else {
                    return Err(codec_err(format!("{} takes one input", node.kind)));
                };
                let payload: WritePayload = serde_json::from_slice(&node.payload)
                    .map_err(|e| codec_err(format!("bad {} payload: {e}", node.kind)))?;
                let plan_props = payload.plan_props.clone();
                let table = self.decode_table(payload)?;
                let input = Arc::clone(input);
                Ok(if node.kind == DATA_FILE_WRITE {
                    Arc::new(DataFileWriteExec::new(input, table, plan_props))
                } else {
                    Arc::new(RowChangeWriteExec::new(input, table, plan_props)?)
                })
            }
            other => Err(codec_err(format!(
                "unknown SQE plan node '{other}': coordinator and worker versions differ?"
            ))),
        }
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>) -> Result<()> {
        if let Some(write) = node.downcast_ref::<DataFileWriteExec>() {
            let payload = write_payload(write.table(), write.plan_props());
            return encode_node(DATA_FILE_WRITE, None, None, &payload, buf);
        }
        if let Some(write) = node.downcast_ref::<RowChangeWriteExec>() {
            let payload = write_payload(write.table(), write.plan_props());
            return encode_node(ROW_CHANGE_WRITE, None, None, &payload, buf);
        }
        if let Some(positions) = node.downcast_ref::<RowPositionsExec>() {
            let files = encode_files(positions.partitions(), positions.io())?;
            return encode_node(
                ROW_POSITIONS,
                Some(node.schema().as_ref()),
                Some(positions.read_schema().as_ref()),
                &files,
                buf,
            );
        }
        let Some(scan) = node.downcast_ref::<IcebergScanExec>() else {
            return Err(codec_err(format!(
                "{} runs on the coordinator only and cannot be sent to a worker",
                node.name()
            )));
        };
        let payload = ScanPayload {
            table: scan.table().to_string(),
            limit: scan.limit(),
            files: encode_files(scan.partitions(), scan.io())?,
        };
        encode_node(
            ICEBERG_SCAN,
            Some(node.schema().as_ref()),
            None,
            &payload,
            buf,
        )
    }
}

fn encode_files(partitions: &[Vec<FileScanTask>], io: &ScanIo) -> Result<FilesWire> {
    let mut schemas: Vec<Arc<Schema>> = Vec::new();
    let mut specs = BTreeMap::new();
    let mut name_mapping = None;
    let mut wired = Vec::with_capacity(partitions.len());
    for tasks in partitions {
        let mut wires = Vec::with_capacity(tasks.len());
        for task in tasks {
            let schema = match schemas.iter().position(|s| s == &task.schema) {
                Some(i) => i,
                None => {
                    schemas.push(Arc::clone(&task.schema));
                    schemas.len() - 1
                }
            };
            if name_mapping.is_none() {
                name_mapping = task.name_mapping.as_deref().cloned();
            }
            let spec_id = task.partition_spec.as_ref().map(|spec| {
                specs
                    .entry(spec.spec_id())
                    .or_insert_with(|| spec.as_ref().clone());
                spec.spec_id()
            });
            let partition = match (&task.partition, &task.partition_spec) {
                (Some(values), Some(spec)) => Some(partition_to_json(values, spec, &task.schema)?),
                _ => None,
            };
            wires.push(TaskWire {
                path: task.data_file_path.clone(),
                format: task.data_file_format,
                file_size: task.file_size_in_bytes,
                start: task.start,
                length: task.length,
                record_count: task.record_count,
                schema,
                project_field_ids: task.project_field_ids.clone(),
                predicate: task.predicate.clone(),
                deletes: task.deletes.clone(),
                spec_id,
                partition,
                case_sensitive: task.case_sensitive,
            });
        }
        wired.push(wires);
    }
    Ok(FilesWire {
        plan_props: io.plan_props.clone(),
        schemas: schemas.iter().map(|s| s.as_ref().clone()).collect(),
        specs,
        name_mapping,
        partitions: wired,
    })
}

/// `payload`, and the node's schemas, as one SQE node.
fn encode_node(
    kind: &str,
    schema: Option<&ArrowSchema>,
    read_schema: Option<&ArrowSchema>,
    payload: &impl Serialize,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let proto = SqeNodeProto {
        kind: kind.to_string(),
        schema: schema.map(TryInto::try_into).transpose()?,
        payload: serde_json::to_vec(payload)
            .map_err(|e| codec_err(format!("cannot encode {kind}: {e}")))?,
        read_schema: read_schema.map(TryInto::try_into).transpose()?,
    };
    proto
        .encode(buf)
        .map_err(|e| codec_err(format!("cannot encode {kind}: {e}")))
}

fn write_payload(table: &Table, plan_props: &HashMap<String, String>) -> WritePayload {
    WritePayload {
        table: table.identifier().clone(),
        metadata: table.metadata().clone(),
        metadata_location: table.metadata_location().map(str::to_string),
        plan_props: plan_props.clone(),
    }
}

fn decoded_schema(schema: Option<&protobuf::Schema>, what: &str) -> Result<Arc<ArrowSchema>> {
    let schema: ArrowSchema = schema
        .ok_or_else(|| codec_err(format!("{what} without schema")))?
        .try_into()?;
    Ok(Arc::new(schema))
}

impl SqeCodec {
    /// A written table on a worker: its metadata and storage, no catalog.
    fn decode_table(&self, payload: WritePayload) -> Result<Table> {
        let props = overlay_table_props(self.storage_props.clone(), &payload.plan_props);
        let mut table = Table::builder()
            .identifier(payload.table)
            .metadata(payload.metadata)
            .file_io(file_io_with_props(props))
            // A writer never commits: it has no catalog.
            .readonly(true)
            .runtime(
                iceberg::Runtime::try_current()
                    .map_err(|e| codec_err(format!("a writer outside a runtime: {e}")))?,
            );
        if let Some(location) = payload.metadata_location {
            table = table.metadata_location(location);
        }
        table
            .build()
            .map_err(|e| codec_err(format!("a writer's table: {e}")))
    }

    fn decode_files(&self, wire: FilesWire) -> Result<(Vec<Vec<FileScanTask>>, ScanIo)> {
        let schemas: Vec<Arc<Schema>> = wire.schemas.into_iter().map(Arc::new).collect();
        let specs: BTreeMap<i32, Arc<PartitionSpec>> = wire
            .specs
            .into_iter()
            .map(|(id, s)| (id, Arc::new(s)))
            .collect();
        let name_mapping = wire.name_mapping.map(Arc::new);
        let partitions = wire
            .partitions
            .into_iter()
            .map(|tasks| {
                tasks
                    .into_iter()
                    .map(|wire| {
                        let schema = schemas
                            .get(wire.schema)
                            .cloned()
                            .ok_or_else(|| codec_err("scan task refers to a missing schema"))?;
                        let spec = match wire.spec_id {
                            Some(id) => Some(specs.get(&id).cloned().ok_or_else(|| {
                                codec_err(format!("missing partition spec {id}"))
                            })?),
                            None => None,
                        };
                        let partition = match (wire.partition, &spec) {
                            (Some(json), Some(spec)) => {
                                Some(partition_from_json(json, spec, &schema)?)
                            }
                            _ => None,
                        };
                        Ok(FileScanTask {
                            file_size_in_bytes: wire.file_size,
                            start: wire.start,
                            length: wire.length,
                            record_count: wire.record_count,
                            data_file_path: wire.path,
                            data_file_format: wire.format,
                            schema,
                            project_field_ids: wire.project_field_ids,
                            predicate: wire.predicate,
                            deletes: wire.deletes,
                            partition,
                            partition_spec: spec,
                            name_mapping: name_mapping.clone(),
                            case_sensitive: wire.case_sensitive,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let props = overlay_table_props(self.storage_props.clone(), &wire.plan_props);
        let io = ScanIo {
            file_io: file_io_with_props(props),
            plan_props: wire.plan_props,
        };
        Ok((partitions, io))
    }
}

fn partition_to_json(
    values: &Struct,
    spec: &PartitionSpec,
    schema: &Schema,
) -> Result<serde_json::Value> {
    let partition_type = spec
        .partition_type(schema)
        .map_err(|e| codec_err(format!("partition type: {e}")))?;
    Literal::Struct(values.clone())
        .try_into_json(&Type::Struct(partition_type))
        .map_err(|e| codec_err(format!("partition values: {e}")))
}

fn partition_from_json(
    json: serde_json::Value,
    spec: &PartitionSpec,
    schema: &Schema,
) -> Result<Struct> {
    let partition_type = spec
        .partition_type(schema)
        .map_err(|e| codec_err(format!("partition type: {e}")))?;
    match Literal::try_from_json(json, &Type::Struct(partition_type)) {
        Ok(Some(Literal::Struct(values))) => Ok(values),
        Ok(_) => Err(codec_err("partition values are not a struct")),
        Err(e) => Err(codec_err(format!("partition values: {e}"))),
    }
}
