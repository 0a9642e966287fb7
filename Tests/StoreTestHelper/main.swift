import EventStoreLMDB
print("helper")
