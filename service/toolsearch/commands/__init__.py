"""The `toolsearch` commands, one module each (`toolsearch.cli` puts them together).

Each module's `add_..._command(subparsers)` (`add_model_commands` for the `model` group) registers
its command and sets `handler` on the parsed namespace: a callable taking the namespace and
returning the exit status.
"""
