# Task targets over dev.py (which creates .venv on first use). `make help` lists them.
.PHONY: help lint fix test fast real preview lock
help:
	@echo "make lint | fix | fast | real | test | preview | lock   (see docs/development.md)"
lint:  ## ruff and mypy, as CI runs them
	python3 dev.py lint
fix:  ## ruff's fixes, then noqa for what has no fix (the command docs/development.md names)
	python3 dev.py lint --fix-all
fast:
	python3 dev.py test --fast
real:
	python3 dev.py test --real
test:
	python3 dev.py test
preview:
	python3 dev.py preview
lock:
	python3 dev.py lock
