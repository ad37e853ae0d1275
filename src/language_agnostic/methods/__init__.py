"""One module per method: a torch module and its losses as pure tensor functions."""
