"""Sections: a rule document split by its structure (parts, subparts, CFR sections, questions), and each comment tied to the sections it cites or is nearest to."""
