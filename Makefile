# sigbench — the two commands of the README's quick start, and the benchmark.
#   sudo make run    install what is missing, build, run the default reproduction
#   sudo make test   fmt check, clippy, every test (unit and end-to-end, needs root; unpacks
#                    QEMU 10 beside the system's for the several-CPU guest test)
#   sudo make bench  executor overhead vs C, and peak RSS at N = 1 000 000

CARGO := $(shell scripts/cargo.sh)
# Static (see .cargo/config.toml), so the target triple is part of the path.
BIN := target/x86_64-unknown-linux-gnu/release/sigbench
export PATH := $(dir $(CARGO)):$(PATH)

.PHONY: deps build run test bench

deps:
	@scripts/deps.sh

build: deps
	$(CARGO) build --release

run: build
	$(BIN) run

test: deps
	@scripts/qemu10.sh >/dev/null
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings -D clippy::undocumented_unsafe_blocks
	$(CARGO) test --workspace

bench: build
	bash bench/run.sh
