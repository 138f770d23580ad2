"""The fetch tests: the fetch stage over the API and the mirror, the watermark, the seal's Eastern days, mirror listings."""
