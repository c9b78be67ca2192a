"""`ringsum check`, `baseline` and `instructions`: did a build get slower, and how sure is the check."""
