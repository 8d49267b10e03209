"""What needs attention: a person's or a team's entities, ordered by what is wrong."""
