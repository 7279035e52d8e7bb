# A contributor's commands; .ci/run uses the same targets.
#
#   make dev         .venv with okfast installed editable and the test extra
#   make test        the test suite (the README's test command, in .venv)
#   make test-rs     the Rust core's unit tests
#   make lint        cargo fmt + clippy, ruff check + format, mypy --strict
#   make stubtest    okfast/_native.pyi against the built extension
#   make bench       the benchmarks over benches/ (installs the bench extra)
#   make wheel       a manylinux2014 wheel in dist/, built by maturin from PyPI
#   make test-wheel  that wheel in a fresh venv, tested with no Rust on PATH

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The same range as pyproject's [build-system]; installed from PyPI into its
# own venv, so a wheel never depends on a maturin installed by hand. With zig
# (the ziglang package) maturin links against glibc 2.17, so the wheel is
# manylinux2014 like most on PyPI; linked by the system's cc it would need the
# build machine's glibc (manylinux_2_34 here). ziglang is held to the minor
# version tested: zig changes between minor versions.
MATURIN := maturin>=1.9,<2
ZIGLANG := ziglang>=0.17.1,<0.18
BUILD_VENV := .venv-build
WHEEL_VENV := .venv-wheel
# benches/README.md: the quick run (10k concepts) unless told otherwise.
OKFAST_BENCH_SIZES ?= 10000
export OKFAST_BENCH_SIZES

.PHONY: dev test test-rs lint stubtest bench wheel test-wheel

dev:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[test]'

test:
	$(PY) -m pytest -q

test-rs:
	cargo test -p okfast-core --release

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(PY) -m mypy

stubtest:
	$(PY) -m mypy.stubtest okfast._native

bench:
	$(VENV)/bin/pip install -q -e '.[test,bench]'
	$(PY) -m pytest benches -p no:cacheprovider --benchmark-only

$(BUILD_VENV)/bin/maturin:
	$(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/pip install -q '$(MATURIN)' '$(ZIGLANG)'

wheel: $(BUILD_VENV)/bin/maturin
	rm -rf dist
	PATH="$(CURDIR)/$(BUILD_VENV)/bin:$$PATH" $(BUILD_VENV)/bin/maturin build --release \
		--zig --compatibility manylinux2014 --out dist --interpreter $(PYTHON)
	@ls dist/okfast-*-manylinux2014_*.whl

# The wheel as a user without Rust gets it: a fresh venv, the wheel and its
# test extra installed from binaries only, with every directory that holds
# cargo or rustc left off PATH, and the suite run against the installed
# okfast (never ./python). Run `make wheel` first.
test-wheel:
	@set -eu; \
	wheel=$$(ls dist/okfast-*.whl); \
	norust=$$(printf '%s\n' "$$PATH" | tr ':' '\n' \
		| while read -r d; do [ -e "$$d/cargo" ] || [ -e "$$d/rustc" ] || printf '%s:' "$$d"; done); \
	export PATH="$${norust%:}"; \
	if command -v cargo || command -v rustc; then echo "Rust is still on PATH"; exit 1; fi; \
	echo "PATH without Rust: $$PATH"; \
	rm -rf $(WHEEL_VENV); \
	$(PYTHON) -m venv $(WHEEL_VENV); \
	$(WHEEL_VENV)/bin/pip install -q --only-binary=:all: "$$wheel[test]"; \
	where=$$($(WHEEL_VENV)/bin/python -c 'import okfast; print(okfast.__file__)'); \
	echo "okfast imported from $$where"; \
	case "$$where" in "$(CURDIR)/$(WHEEL_VENV)/lib/"*/site-packages/okfast/*) ;; \
		*) echo "okfast is not the wheel installed in $(WHEEL_VENV)"; exit 1;; esac; \
	OKFAST_EXPECT_INSTALLED="$(CURDIR)/$(WHEEL_VENV)" $(WHEEL_VENV)/bin/python -m pytest -q -p no:cacheprovider
