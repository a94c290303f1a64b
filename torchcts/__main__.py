from torchcts.cli.main import entry

entry()
