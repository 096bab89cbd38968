"""HTTP serving: gunicorn's configuration, our worker with its one request reader and one answer writer, and the Flask app."""
