"""Higher-order ops: ``torch.cond``. (placeholder, filled in below)"""
