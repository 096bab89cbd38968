"""HTTP serving: the Flask app factory, gunicorn configuration, TLS, health and metrics."""
