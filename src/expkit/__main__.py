"""``python -m expkit`` runs the CLI."""

from expkit.cli.app import main

if __name__ == "__main__":
    main()
