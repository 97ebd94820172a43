# The `sqe` binary in a small runtime image; the Helm chart runs it as
#   sqe coordinator --config /etc/sqe/coordinator.toml
#   sqe worker --config /etc/sqe/worker.toml
# (not built by CI: there is no container engine on its machines; tests/python/test_helm_chart.py
# checks this file's shape.)

FROM rust:1.94-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin sqe

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home sqe
COPY --from=build /src/target/release/sqe /usr/local/bin/sqe
USER 10001
EXPOSE 50051 8080 9464 50052 9465
ENTRYPOINT ["/usr/local/bin/sqe"]
