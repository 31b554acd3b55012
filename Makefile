# The two commands: `make demo` (clean the sample list in the sandbox world) and `make test`.
# Both create .venv from the pinned versions in requirements.lock when it is missing or stale:
# `make demo` installs what running needs (the package with its dask, s3 and postgres extras)
# and no development tool; `make test` (and lint, docs, bench...) adds the development tools to
# the same .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
RUN    := $(VENV)/.installed-run
STAMP  := $(VENV)/.installed
DEMO   ?= build/demo
# The pages whose generated parts cog writes (the settings tables, in docs/operations.md; each
# vendor's mapping table, in docs/vendors/).
COGGED := README.md $(wildcard docs/*.md) $(wildcard docs/vendors/*.md)

.PHONY: venv demo test integration lint docs bench clean lock

venv: $(STAMP)

# What running needs: the package and its extras, no development tool.
$(RUN): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dask,s3,postgres]'
	touch $(RUN)

# The development tools, added to the same environment.
$(STAMP): $(RUN)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

demo: $(RUN)
	$(BIN)/listclean bounces import sample_data/bounces.csv sample_data/bounces.mbox \
		--sandbox --cache-dir $(DEMO)/cache
	$(BIN)/listclean contacts import sample_data/contacts.csv --sandbox --cache-dir $(DEMO)/cache
	$(BIN)/listclean clean sample_data/list.csv -o $(DEMO)/list.clean.parquet \
		--sandbox --cache-dir $(DEMO)/cache --verify smtp
	$(BIN)/listclean verify 'John.Doe@gmial.com' --sandbox --cache-dir $(DEMO)/cache
	@echo "listclean is installed in $(BIN). Put it on PATH with: source $(BIN)/activate"
	@echo "(or: export PATH=\"$(abspath $(BIN)):\$$PATH\"; docs/command-line.md says more)"

# Two processes, each taking whole test files (module fixtures start once): about six minutes
# on a 2-core machine, against ten in one process.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile

# The heavy end-to-end suite: an installed wheel in a fresh venv, the report in a browser, the
# container image built and run with podman, and the like (CI runs it too).
integration: $(STAMP)
	$(BIN)/python -m pytest -m integration

lint: $(STAMP)
	$(BIN)/ruff check pipeline worlds tests bench sample_data
	$(BIN)/ruff format --check pipeline worlds tests bench sample_data
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/cog --check --check-fail-msg='run make docs' $(COGGED)

# Regenerate the documentation's generated parts (the settings tables of docs/operations.md).
docs: $(STAMP)
	$(BIN)/cog -r $(COGGED)

bench: $(STAMP)
	$(BIN)/python bench/bench_clean.py
	$(BIN)/python bench/bench_service.py
	$(BIN)/python bench/bench_service_pass.py
	$(BIN)/python bench/bench_jobs.py
	$(BIN)/python bench/bench_multi.py
	$(BIN)/python bench/bench_smtp.py
	$(BIN)/python bench/bench_contacts.py
	$(BIN)/python bench/bench_identity.py
	$(BIN)/python bench/bench_signals.py
	$(BIN)/python bench/bench_encodings.py

# Re-pin after changing dependencies in pyproject.toml.
lock: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable > requirements.lock

clean:
	rm -rf build $(VENV)
