"""The sections stage: rule documents split by their structure, comments tied to the sections they cite or are nearest, and what people read of them."""
