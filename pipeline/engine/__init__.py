"""The Luigi side of docketeer: what a stage's marker vouches for and the one rule that
says a stage is done for a docket (``completion``)."""
