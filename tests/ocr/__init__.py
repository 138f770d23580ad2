"""The OCR tests: Tesseract through PyMuPDF, and the OCR stage merging scans into combined.md."""
