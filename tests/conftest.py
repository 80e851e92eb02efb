"""Test set-up. Nothing to put on ``sys.path``: pytest puts the project root there (``tests`` is a
package), and the project's .venv has ``core`` and the pack's modules installed editable
(requirements.txt), as the pack process finds them in its own directory.
"""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "real: the real path: the Pulumi CLI, the real policy pack and a loopback cluster "
        "(python3 dev.py test --real; needs the toolchain: python3 dev.py toolchain)",
    )
