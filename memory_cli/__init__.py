"""`memory-os`, the command line (`memory_cli.main:cli`): the top layer, which may use every other package."""
