"""Chart geometry for the HTML report: numbers in, coordinates and text out."""
