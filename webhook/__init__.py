"""ServingGate: admission control and scale-in ordering for LLM inference (Kthena, Volcano, NPUs)."""

__version__ = "0.1.0"
