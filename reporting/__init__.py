"""What runs cost and how they went: the daily rollups, test health, the dashboard, and their API
(``/api/costs``, ``/api/repositories``)."""
