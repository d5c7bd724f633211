"""Starting the repository's own app for a run that has no target URL: its recipe (how it
installs and starts) and the BootApp stage that runs the recipe inside the sandbox."""
