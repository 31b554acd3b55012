"""What joins the wings: the Engine built for both fronts, the doctor's checks, and an
opt-out carried to every store."""
