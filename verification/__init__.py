"""The box and the stages that run in it: BootApp (``boot/``), ExploreApp
(``exploration/``), VerifyTests (here) and the coverage map (``coverage.py``).

VerifyTests: the generated tests run against a live app before the pull request.

``playwright`` runs spec files with Playwright Test in the sandbox (``sandbox``, ``proxy``); ``evidence``
keeps what a failure left behind; ``verify`` runs, heals and quarantines and builds the
``verification_report``; ``healer`` runs the Test Engineer's healing session in a fresh
process of the worker's agent pool; ``summary`` writes the report into the pull request body.
"""
