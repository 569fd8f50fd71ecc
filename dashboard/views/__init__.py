"""The console's views, one module per screen family; each module starts with its access helpers."""
