"""HTTP serving: gunicorn's configuration, our worker with its one request reader and one answer writer, and the one seam every request goes through (the route table and the Flask app behind it)."""
