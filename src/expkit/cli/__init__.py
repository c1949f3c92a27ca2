"""The typer CLI: one module per command group, no arithmetic (it calls the library and renders)."""
