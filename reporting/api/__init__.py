"""The reporting routers: ``/api/costs`` (costs.py) and ``/api/repositories`` (health.py)."""
