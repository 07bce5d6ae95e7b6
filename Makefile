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

# Until the HTTP server lands (issue F5), `serve` runs one chat prompt on the default model.
serve: build
	@$(BUILD_DIR)/bin/tensorfold run $(DEFAULT_MODEL) --chat \
	  -p "$${PROMPT:-What is the capital of France?}" -n 64

clean:
	rm -rf build
