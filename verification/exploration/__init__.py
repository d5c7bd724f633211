"""The ExploreApp stage: the target app visited in the sandboxed browser before any test is
written. ``explore`` drives the browser (``box/explore.mjs``) and checks what it brings back;
``service`` builds the stage's inputs from the run and settings."""
