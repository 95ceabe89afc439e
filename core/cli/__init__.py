"""The command line: ``main`` assembles the parser, ``common`` is what every command shares, and
each other module is one group of commands (see ``core.cli.main.GROUPS``).

Nothing in core imports this package: it is the top layer, beside the desk.
"""
