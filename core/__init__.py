"""Evidence Desk core: the async agent runtime, with no Qt and no eager litellm import."""

__all__: list[str] = []
