class BackendError(Exception):
    """The backend cannot lower this IR to PTX (an unsupported operation, type or target)."""
