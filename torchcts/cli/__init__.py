"""Command-line interface: one module per command, registered in torchcts.cli.main.COMMANDS."""
