# The two README commands: `make serve` and `make test`. Both install what is missing first.
PRESET ?= $(if $(CI),ci,release)
BUILD_DIR := build/$(PRESET)
JOBS ?= $(shell nproc)
TENSORFOLD_HOME ?= $(HOME)/.cache/tensorfold
DEFAULT_MODEL := $(TENSORFOLD_HOME)/models/SmolLM2-135M-Instruct.Q4_1.gguf

.PHONY: setup build test unit-test fuzz serve clean

setup:
	@scripts/setup

build: setup
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

unit-test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

fuzz: setup
	@scripts/run_fuzz

test: unit-test fuzz
	@TF_BIN=$(BUILD_DIR)/bin/tensorfold python3 -m pytest -q tests/integration

# Serves the default model on http://127.0.0.1:8080/v1 (SERVE_ARGS adds flags, e.g. --api-key).
serve: build
	@$(BUILD_DIR)/bin/tensorfold serve $(DEFAULT_MODEL) --port 8080 $(SERVE_ARGS)

clean:
	rm -rf build
