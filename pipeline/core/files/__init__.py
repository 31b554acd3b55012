"""Files of rows as people export them: kinds, encodings, delimited text, long fields."""
