//! The messages of `proto/control.proto`.

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RegisterRequest {
    #[prost(string, tag = "1")]
    pub node_id: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(string, tag = "3")]
    pub version: String,
    #[prost(uint64, tag = "4")]
    pub heartbeat_interval_ms: u64,
    #[prost(uint32, tag = "5")]
    pub task_threads: u32,
    #[prost(uint64, tag = "6")]
    pub memory_limit_bytes: u64,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RegisterResponse {
    #[prost(string, tag = "1")]
    pub coordinator_id: String,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct HeartbeatRequest {
    #[prost(string, tag = "1")]
    pub node_id: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(uint64, tag = "3")]
    pub running_tasks: u64,
    #[prost(bool, tag = "4")]
    pub draining: bool,
}

#[derive(Clone, Copy, PartialEq, ::prost::Message)]
pub struct HeartbeatResponse {
    #[prost(bool, tag = "1")]
    pub known: bool,
}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DrainRequest {
    #[prost(string, tag = "1")]
    pub node_id: String,
    #[prost(string, tag = "2")]
    pub url: String,
}

#[derive(Clone, Copy, PartialEq, ::prost::Message)]
pub struct DrainResponse {}

#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DeregisterRequest {
    #[prost(string, tag = "1")]
    pub node_id: String,
    #[prost(string, tag = "2")]
    pub url: String,
}

#[derive(Clone, Copy, PartialEq, ::prost::Message)]
pub struct DeregisterResponse {}
