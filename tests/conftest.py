"""Test set-up. Nothing to put on ``sys.path``: pytest puts the project root there (``tests`` is a
package), and the project's .venv has ``core`` and the pack's modules installed editable
(requirements.txt), as the pack process finds them in its own directory.
"""
