"""`ringsum check`, `ringsum baseline` and `ringsum instructions`: did a build get slower, and how sure is the check."""
