# a second file named net.py: frames of models/net.py must not map here
def helper():
    return 1
