"""A PostgreSQL database backend that starts the embedded server before its first connection."""
