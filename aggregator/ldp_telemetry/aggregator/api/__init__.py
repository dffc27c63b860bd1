"""The HTTP API: the Flask app factory and one blueprint per concern (thin adapters)."""
