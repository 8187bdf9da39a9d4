print("photoledger-server")
