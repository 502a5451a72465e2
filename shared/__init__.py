"""Code that more than one Evidencia API uses. It knows no API of its own."""
