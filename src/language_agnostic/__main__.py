"""``python -m language_agnostic`` runs the project like ``kedro run``."""

from pathlib import Path

from kedro.framework.cli.utils import find_run_command
from kedro.framework.project import configure_project


def main() -> None:
    """Run the project's ``run`` command."""
    package_name = Path(__file__).parent.name
    configure_project(package_name)
    run = find_run_command(package_name)
    run()


if __name__ == "__main__":
    main()
