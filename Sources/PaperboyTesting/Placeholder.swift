import Paperboy
